-- The orchestrator's cost for an hour is fully attributed: its shares add up to the cost (within rounding).
with shares as (
    select hour, sum(orchestrator_eur) as attributed from {{ ref('int_orchestrator_shares') }} group by hour
),
cost as (
    select hour, sum(cost_eur) as cost_eur from {{ ref('stg_orchestrator_usage') }} group by hour
)
select s.hour, s.attributed, c.cost_eur
from shares as s
inner join cost as c on s.hour = c.hour
where abs(s.attributed - c.cost_eur) > 0.0001
