-- Cost and tokens per tenant, model and day (UTC), from every model call (steps, condensations, titles).
SELECT tenant,
       model,
       ("timestamp" AT TIME ZONE 'UTC')::date AS day,
       count(*)                               AS calls,
       sum(prompt_tokens)                     AS prompt_tokens,
       sum(completion_tokens)                 AS completion_tokens,
       sum(cache_read_tokens)                 AS cache_read_tokens,
       sum(reasoning_tokens)                  AS reasoning_tokens,
       sum(cost_usd)                          AS cost_usd
FROM model_calls
GROUP BY tenant, model, day
ORDER BY day, tenant, model;
