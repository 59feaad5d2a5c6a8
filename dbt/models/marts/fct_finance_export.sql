{{ config(order_by='(month, business_unit, workload)') }}
-- The monthly export to finance: one row per month × business unit × workload, rate-card saving labelled.
select
    s.month as month,
    ifNull(d.business_unit, '') as business_unit,
    s.workload as workload,
    s.counterfactual_eur as counterfactual_eur,
    s.costs_eur as costs_eur,
    s.net_saving_eur as net_saving_eur,
    s.reclaimable_eur as reclaimable_eur,
    s.fallback_eur as fallback_eur,
    s.instance_hours as instance_hours,
    s.label as label
from {{ ref('fct_showback_monthly') }} as s
left join {{ ref('dim_workload') }} as d on s.workload = d.workload
settings join_use_nulls = 1
