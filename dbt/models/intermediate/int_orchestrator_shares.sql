-- The orchestrator's hourly cost split pro rata to each workload's instance-hours in that hour.
with totals as (
    select hour, sum(instance_hours) as total_hours from {{ ref('int_workload_hours') }} group by hour
),
cost as (
    select hour, sum(cost_eur) as cost_eur from {{ ref('stg_orchestrator_usage') }} group by hour
)
select
    w.hour as hour,
    w.workload as workload,
    -- scale 6 × scale 6 = scale 12; the division keeps 12 digits (larger scales overflow Decimal128)
    toDecimal64(if(t.total_hours > 0,
                   toDecimal128(ifNull(c.cost_eur, 0), 6) * toDecimal128(w.instance_hours, 6)
                   / toDecimal128(t.total_hours, 6), 0), 6) as orchestrator_eur
from {{ ref('int_workload_hours') }} as w
inner join totals as t on w.hour = t.hour
left join cost as c on w.hour = c.hour
settings join_use_nulls = 1
