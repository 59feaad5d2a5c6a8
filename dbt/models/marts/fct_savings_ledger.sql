{{ config(order_by='(workload, hour)', partition_by='toYYYYMM(hour)') }}
-- The savings ledger, workload × hour (ADR-26): useful work at the guaranteed rate minus every cost.
select
    toDateTime(w.hour, 'UTC') as hour,
    CAST(w.workload AS String) as workload,
    toDecimal64(w.instance_hours, 6) as instance_hours,
    toDecimal64(w.counterfactual_eur, 6) as counterfactual_eur,
    toDecimal64(w.gross_saving_eur, 6) as gross_saving_eur,
    toDecimal64(w.reclaimable_eur, 6) as reclaimable_eur,
    toDecimal64(w.floor_eur, 6) as floor_eur,
    toDecimal64(w.fallback_eur, 6) as fallback_eur,
    toDecimal64(w.headroom_eur, 6) as headroom_eur,
    toDecimal64(w.storage_eur, 6) as storage_eur,
    toDecimal64(o.orchestrator_eur, 6) as orchestrator_eur,
    toDecimal64(w.reclaimable_eur + w.floor_eur + w.fallback_eur + w.headroom_eur + w.storage_eur
                + o.orchestrator_eur, 6) as costs_eur,
    toDecimal64(w.counterfactual_eur - (w.reclaimable_eur + w.floor_eur + w.fallback_eur + w.headroom_eur
                + w.storage_eur + o.orchestrator_eur), 6) as net_saving_eur,
    toDecimal64(w.wasted_hours, 6) as wasted_hours,
    toDecimal64(w.wasted_eur, 6) as wasted_eur,
    toDecimal64(w.defect_wasted_eur, 6) as defect_wasted_eur,
    toDecimal64(w.depth_premium_eur, 6) as depth_premium_eur,
    toDecimal64(w.false_positive_hours, 6) as false_positive_hours,
    toDecimal64(w.false_positive_eur, 6) as false_positive_eur,
    'rate-card saving' as label
from {{ ref('int_workload_hours') }} as w
inner join {{ ref('int_orchestrator_shares') }} as o on w.hour = o.hour and w.workload = o.workload
