-- The full trail of one conversation ($1 tenant, $2 conversation) for an audit: every event in
-- order, where it is in the stream, who wrote it, and the event itself.
SELECT seq,
       "timestamp",
       type,
       source,
       stream_seq,
       position,
       id,
       event
FROM events
WHERE tenant = $1 AND conversation = $2
ORDER BY seq;
