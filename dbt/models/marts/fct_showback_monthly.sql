{{ config(order_by='(workload, month)') }}
-- Per workload and month: what the owner sees (ADR-27): gross vs net and each cost line.
select
    toDate(toStartOfMonth(l.hour)) as month,
    l.workload as workload,
    toDecimal64(sum(l.instance_hours), 6) as instance_hours,
    toDecimal64(sum(l.counterfactual_eur), 6) as counterfactual_eur,
    toDecimal64(sum(l.gross_saving_eur), 6) as gross_saving_eur,
    toDecimal64(sum(l.reclaimable_eur), 6) as reclaimable_eur,
    toDecimal64(sum(l.floor_eur), 6) as floor_eur,
    toDecimal64(sum(l.fallback_eur), 6) as fallback_eur,
    toDecimal64(sum(l.headroom_eur), 6) as headroom_eur,
    toDecimal64(sum(l.storage_eur), 6) as storage_eur,
    toDecimal64(sum(l.orchestrator_eur), 6) as orchestrator_eur,
    toDecimal64(sum(l.costs_eur), 6) as costs_eur,
    toDecimal64(sum(l.net_saving_eur), 6) as net_saving_eur,
    toDecimal64(sum(l.wasted_hours), 6) as wasted_hours,
    toDecimal64(sum(l.defect_wasted_eur), 6) as defect_wasted_eur,
    toDecimal64(sum(l.depth_premium_eur), 6) as depth_premium_eur,
    toDecimal64(sum(l.false_positive_hours), 6) as false_positive_hours,
    toDecimal64(sum(l.false_positive_eur), 6) as false_positive_eur,
    toFloat64(if(sum(l.counterfactual_eur) > 0, sum(l.net_saving_eur) / sum(l.counterfactual_eur) * 100, 0))
        as net_pct,
    'rate-card saving' as label
from {{ ref('fct_savings_ledger') }} as l
group by month, workload
