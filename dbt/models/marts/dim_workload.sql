{{ config(order_by='workload') }}
-- Workloads seen in the events: partition, latest contract version, business unit (from its pools), first/last seen.
select
    CAST(e.workload AS String) as workload,
    toString(argMax(e.partition, e.time)) as partition,
    toString(argMax(e.contract_version, e.time)) as contract_version,
    toString(ifNull(anyIf(p.business_unit, p.business_unit != ''), '')) as business_unit,
    min(e.time) as first_seen,
    max(e.time) as last_seen
from {{ source('sco', 'events') }} as e
left join {{ ref('stg_pools') }} as p on e.pool = p.pool
where e.workload != ''
group by e.workload
settings join_use_nulls = 1
