-- Conversations that need a look: ended in error or stuck, or running with no event for longer than $1
-- (an interval, e.g. '15 minutes'), newest first, with the last error the log gave.
SELECT tenant,
       conversation,
       status,
       title,
       updated_at,
       last_error_code,
       last_error_detail,
       last_seq
FROM conversations
WHERE status IN ('error', 'stuck')
   OR (status = 'running' AND updated_at < now() - $1::interval)
ORDER BY updated_at DESC, tenant, conversation;
