-- Latency of the agent's steps (their model calls) per model: median, p90, p99 and the slowest, in ms.
SELECT model,
       count(*)                                                   AS steps,
       percentile_cont(0.5)  WITHIN GROUP (ORDER BY latency_ms)  AS p50_ms,
       percentile_cont(0.9)  WITHIN GROUP (ORDER BY latency_ms)  AS p90_ms,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms)  AS p99_ms,
       max(latency_ms)                                            AS max_ms
FROM model_calls
WHERE purpose = 'step'
GROUP BY model
ORDER BY model;
