-- Cost lines rolled up to workload × hour, with checkpoint storage joined in.
with usage as (
    select
        hour,
        workload,
        sum(instance_hours) as instance_hours,
        sum(counterfactual_eur) as counterfactual_eur,
        sum(gross_saving_eur) as gross_saving_eur,
        sum(reclaimable_eur) as reclaimable_eur,
        sum(floor_eur) as floor_eur,
        sum(fallback_eur) as fallback_eur,
        sum(headroom_eur) as headroom_eur,
        sum(wasted_eur) as wasted_eur,
        sum(wasted_hours) as wasted_hours,
        sum(defect_wasted_eur) as defect_wasted_eur,
        sum(false_positive_hours) as false_positive_hours,
        sum(false_positive_eur) as false_positive_eur,
        sum(depth_premium_eur) as depth_premium_eur
    from {{ ref('stg_instance_hours') }}
    group by hour, workload
),
storage as (
    select hour, workload, sum(storage_eur) as storage_eur from {{ ref('stg_storage_usage') }} group by hour, workload
)
select
    u.*,
    toDecimal64(ifNull(s.storage_eur, 0), 6) as storage_eur
from usage as u
left join storage as s on u.hour = s.hour and u.workload = s.workload
settings join_use_nulls = 1
