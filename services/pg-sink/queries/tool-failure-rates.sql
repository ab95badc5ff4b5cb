-- How often each tool fails: calls answered with an error observation or an agent_error, out of the answered ones.
SELECT tool_name,
       count(*)                                                    AS calls,
       count(*) FILTER (WHERE outcome = 'ok')                      AS ok,
       count(*) FILTER (WHERE outcome IN ('error', 'agent_error')) AS failed,
       count(*) FILTER (WHERE outcome = 'rejected')                AS rejected,
       count(*) FILTER (WHERE outcome IS NULL)                     AS unanswered,
       round(count(*) FILTER (WHERE outcome IN ('error', 'agent_error'))::numeric
             / nullif(count(*) FILTER (WHERE outcome IS NOT NULL), 0), 4) AS failure_rate
FROM tool_calls
GROUP BY tool_name
ORDER BY failure_rate DESC NULLS LAST, tool_name;
