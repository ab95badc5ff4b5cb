import { describe, expect, it } from 'vitest';
import {
  commitSubjectTransform,
  groupConsumerNames,
  groupConsumers,
  PARTITIONS,
  partitionOwners,
  partitionPriorities,
  partitionPriority,
} from './layout.js';

describe('partitions', () => {
  it("gives a partitioned group its own consumer and one per partition, each filtered to the group's kinds in it; other groups one consumer", () => {
    const consumers = groupConsumers('step-worker', 'p');
    expect(consumers).toHaveLength(PARTITIONS + 1);
    expect(consumers[0]).toEqual({
      name: 'step-worker',
      filterSubjects: ['p.*.*', 'p.*.*.user', 'p.*.*.tool', 'p.*.*.condense', 'p.*.*.delegate'],
    });
    expect(consumers[3]).toEqual({
      name: 'step-worker-p2',
      filterSubjects: ['p.*.*.user.2', 'p.*.*.tool.2', 'p.*.*.condense.2', 'p.*.*.delegate.2'],
      partition: 2,
    });
    expect(groupConsumerNames('tool-runner').at(-1)).toBe(`tool-runner-p${PARTITIONS - 1}`);
    expect(groupConsumers('projector', 'p')).toEqual([{ name: 'projector', filterSubjects: ['p.>'] }]);
    expect(commitSubjectTransform('p')).toEqual({
      src: 'p.*.*.*',
      dest: `p.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{partition(${PARTITIONS},1,2)}}`,
    });
  });

  it('ranks instances differently on each partition, over every priority nats-server takes, the same for the same id', () => {
    const ids = Array.from({ length: 200 }, (_, index) => `step-worker-${index.toString(16)}`);
    const priorities = ids.flatMap((id) =>
      Array.from({ length: PARTITIONS }, (_, partition) => partitionPriority(id, partition)),
    );
    expect(new Set(priorities)).toEqual(new Set([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    // roughly even: no priority takes more than twice its share
    for (let priority = 0; priority < 10; priority += 1)
      expect(priorities.filter((each) => each === priority).length).toBeLessThan((priorities.length / 10) * 2);
    expect(partitionPriority('a', 3)).toBe(partitionPriority('a', 3));
    // two instances split the partitions between them, not all to one
    const [a, b] = ids as [string, string];
    const wins = Array.from({ length: PARTITIONS }, (_, partition) =>
      Math.sign(partitionPriority(a, partition) - partitionPriority(b, partition)),
    );
    expect(wins).toContain(1);
    expect(wins).toContain(-1);
  });

  it('ties two instances on a partition about one time in ten, independently of the other partitions', () => {
    // on a tied partition nats-server alternates the commits between the two instances
    const pairs = Array.from({ length: 2_000 }, (_, index) => [`tool-runner-${index}a`, `tool-runner-${index}b`]);
    const ties = pairs.map(
      ([a, b]) =>
        Array.from({ length: PARTITIONS }, (_, partition) => partition).filter(
          (partition) => partitionPriority(a!, partition) === partitionPriority(b!, partition),
        ).length,
    );
    const share = (test: (tied: number) => boolean): number => ties.filter(test).length / ties.length;
    // independent ties are binomial (16, 1/10): none 18.5 %, one 32.9 %, six or more 0.4 %
    expect(share((tied) => tied === 0)).toBeGreaterThan(0.14);
    expect(share((tied) => tied === 0)).toBeLessThan(0.23);
    expect(share((tied) => tied === 1)).toBeGreaterThan(0.28);
    expect(share((tied) => tied >= 6)).toBeLessThan(0.02);
  });

  it('among known members, gives every partition one owner at priority 0, spread evenly, the same in every member', () => {
    for (let size = 1; size <= 12; size += 1) {
      for (let trial = 0; trial < 20; trial += 1) {
        const members = Array.from({ length: size }, (_, index) => `tool-runner-${trial}-${index}`);
        const table = members.map((member) => partitionPriorities(member, members));
        for (let partition = 0; partition < PARTITIONS; partition += 1) {
          const column = table.map((priorities) => priorities[partition]!);
          expect(column.filter((priority) => priority === 0)).toHaveLength(1);
          // the next in line is one member too (ties only past nats-server's last priority)
          if (size > 1) expect(column.filter((priority) => priority === 1)).toHaveLength(1);
        }
        const owned = table.map((priorities) => priorities.filter((priority) => priority === 0).length);
        expect(Math.max(...owned)).toBeLessThanOrEqual(Math.ceil(PARTITIONS / size));
        if (size === 2) expect(owned).toEqual([8, 8]);
        // listed or not, an instance counts itself; order and repeats do not matter
        expect(partitionPriorities(members[0]!, [...members].reverse().slice(0, -1).concat(members))).toEqual(table[0]);
        // what any instance (a member or not) reads as each partition's owner is the member at priority 0 there
        expect(partitionOwners([...members].reverse())).toEqual(
          Array.from({ length: PARTITIONS }, (_, partition) => members[table.findIndex((row) => row[partition] === 0)]),
        );
      }
    }
  });

  it('names no owner where no member is known', () => {
    expect(partitionOwners([])).toEqual([]);
  });

  it('moves few partitions when a member joins or leaves', () => {
    let moved = 0;
    const trials = 200;
    for (let trial = 0; trial < trials; trial += 1) {
      const members = [0, 1, 2].map((index) => `step-worker-${trial}-${index}`);
      const three = partitionOwners(members);
      const two = partitionOwners(members.slice(0, 2));
      moved += three.filter((owner, partition) => owner !== members[2] && owner !== two[partition]).length;
    }
    // the leaving member's partitions move; of the others', few (each may take one more to stay even)
    expect(moved / trials).toBeLessThan(3);
  });
});
