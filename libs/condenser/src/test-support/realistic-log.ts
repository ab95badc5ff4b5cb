import { TestLog } from './test-log.js';

/**
 * A coding session: a task, then turns of parallel batches (every third turn a thinking tool
 * loop), occasional failures and rejections, an agent report and a user follow-up.
 */
export function realisticLog(turns: number, log = new TestLog()): TestLog {
  if (log.events.length === 0) {
    log.system();
    log.user('The build of service A fails; find out why and fix it.');
  }
  for (let turn = 0; turn < turns; turn += 1) {
    const thinking = turn % 3 === 0;
    log.batch({
      size: 1 + (turn % 3),
      thinking,
      thought: `turn ${turn}: inspecting`,
      output: `listing of turn ${turn} ${'.'.repeat(200)}`,
    });
    const [failing] = log.calls({ thought: `turn ${turn}: running tests` });
    if (failing !== undefined) {
      if (turn % 4 === 1) log.error(failing, `tests of turn ${turn} crashed`);
      else if (turn % 5 === 2) log.reject(failing, 'do not run that');
      else log.observe(failing, `tests of turn ${turn}: 3 passed`);
    }
    log.noise();
    log.agent(`Report of turn ${turn}.`);
    log.user(`Follow-up ${turn}: go on.`);
  }
  return log;
}
