{{ config(engine='MergeTree()', order_by='(workload, month)') }}
-- Per workload and month: what the owner sees (ADR-27): gross vs net and each cost line.
select
    toDate(toStartOfMonth(hour)) as month,
    workload,
    toDecimal64(sum(instance_hours), 6) as instance_hours,
    toDecimal64(sum(counterfactual_eur), 6) as counterfactual_eur,
    toDecimal64(sum(gross_saving_eur), 6) as gross_saving_eur,
    toDecimal64(sum(reclaimable_eur), 6) as reclaimable_eur,
    toDecimal64(sum(floor_eur), 6) as floor_eur,
    toDecimal64(sum(fallback_eur), 6) as fallback_eur,
    toDecimal64(sum(headroom_eur), 6) as headroom_eur,
    toDecimal64(sum(storage_eur), 6) as storage_eur,
    toDecimal64(sum(orchestrator_eur), 6) as orchestrator_eur,
    toDecimal64(sum(costs_eur), 6) as costs_eur,
    toDecimal64(sum(net_saving_eur), 6) as net_saving_eur,
    toDecimal64(sum(wasted_hours), 6) as wasted_hours,
    toDecimal64(sum(defect_wasted_eur), 6) as defect_wasted_eur,
    toDecimal64(sum(depth_premium_eur), 6) as depth_premium_eur,
    toFloat64(if(sum(counterfactual_eur) > 0, sum(net_saving_eur) / sum(counterfactual_eur) * 100, 0)) as net_pct,
    'rate-card saving' as label
from {{ ref('fct_savings_ledger') }}
group by month, workload
