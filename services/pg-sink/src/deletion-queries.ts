import type { PoolClient } from 'pg';
import { pgText } from './pg-text.js';

/** A conversation's deletion, as the sink records it (libs/runtime DeletionNotice). */
export type Deletion = {
  readonly tenant: string;
  readonly conversation: string;
  readonly upToStreamSeq: number;
  readonly reason: string;
  readonly at: string;
};

/**
 * Records the deletion (once: a repeated notice changes nothing) and, with `drop`, removes the
 * conversation's rows up to the notice's stream sequence: its conversation row only when that row
 * is of the deleted log (not of one created again since), and with it its tool calls. The caller
 * holds the conversation's lock, in the transaction `client` is in.
 */
export async function writeDeletion(client: PoolClient, deletion: Deletion, drop: boolean): Promise<void> {
  const ref = [deletion.tenant, deletion.conversation, deletion.upToStreamSeq];
  await client.query(
    'INSERT INTO deletions (tenant, conversation, up_to_stream_seq, reason, deleted_at, rows_dropped) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING',
    [...ref, pgText(deletion.reason), deletion.at, drop],
  );
  if (drop) {
    const owned = await client.query(
      'DELETE FROM conversations WHERE tenant = $1 AND conversation = $2 AND last_stream_seq <= $3 RETURNING 1',
      ref,
    );
    if ((owned.rowCount ?? 0) > 0)
      await client.query('DELETE FROM tool_calls WHERE tenant = $1 AND conversation = $2', ref.slice(0, 2));
    for (const table of ['events', 'model_calls', 'commits'])
      await client.query(`DELETE FROM ${table} WHERE tenant = $1 AND conversation = $2 AND stream_seq <= $3`, ref);
  }
}

/** For conversations the sink holds no row of: the newest deletion dropped of each, by `tenant/conversation`. */
export async function deletedUpToOf(
  client: PoolClient,
  refs: readonly { readonly tenant: string; readonly conversation: string }[],
): Promise<Map<string, number>> {
  if (refs.length === 0) return new Map();
  const { rows } = await client.query<{ tenant: string; conversation: string; up_to: string | number }>(
    'SELECT d.tenant, d.conversation, max(d.up_to_stream_seq) AS up_to FROM deletions d JOIN unnest($1::text[], $2::text[]) AS r(tenant, conversation) USING (tenant, conversation) WHERE d.rows_dropped GROUP BY d.tenant, d.conversation',
    [refs.map((ref) => ref.tenant), refs.map((ref) => ref.conversation)],
  );
  return new Map(rows.map((row) => [`${row.tenant}/${row.conversation}`, Number(row.up_to)]));
}
