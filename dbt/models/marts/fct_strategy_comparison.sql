{{ config(order_by='strategy') }}
-- The placement bake-off: per strategy, its strategy-months of the latest revision and the longest length stored,
-- summed up over seeds (means, the worst seed) and held against price-first on the same seeds.
with latest as (
    select * from {{ source('sco', 'strategy_months') }} final
    where revision = (select argMax(revision, recorded_at) from {{ source('sco', 'strategy_months') }})
),
longest as (
    select * from latest where days = (select max(days) from latest)
),
baseline as (
    select seed, interruptions_pct_h as base_rate from longest where strategy = 'price-first'
)
select
    CAST(l.strategy AS String) as strategy,
    toUInt32(count()) as seeds,
    toFloat64(any(l.days)) as days,
    CAST(any(l.revision) AS String) as revision,
    toFloat64(avg(l.interruptions_pct_h)) as interruptions_pct_h,
    toFloat64(max(l.interruptions_pct_h)) as max_interruptions_pct_h,
    toFloat64(avg(l.net_planning_pct)) as net_planning_pct,
    toFloat64(min(l.net_planning_pct)) as min_net_planning_pct,
    toFloat64(avg(l.net_pct)) as net_pct,
    toFloat64(max(l.shortfall_pct)) as max_shortfall_pct,
    toFloat64(max(l.wasted_pct)) as max_wasted_pct,
    toFloat64(max(l.worst_step_pct)) as worst_step_pct,
    toFloat64(avg(l.ceiling_pct)) as ceiling_pct,
    -- where the saving went, item by item (means over seeds; ceiling − these = the achieved net, to rounding)
    toFloat64(avg(l.floor_pts)) as floor_pts,
    toFloat64(avg(l.fallback_pts)) as fallback_pts,
    toFloat64(avg(l.shortfall_pts)) as shortfall_pts,
    toFloat64(avg(l.wasted_work_pts)) as wasted_work_pts,
    toFloat64(avg(l.overlap_pts)) as overlap_pts,
    toFloat64(avg(l.depth_premium_pts)) as depth_premium_pts,
    toFloat64(avg(l.fit_pts)) as fit_pts,
    toFloat64(avg(l.achieved_pts)) as achieved_pts,
    toUInt32(max(l.workloads_outside)) as max_workloads_outside,
    CAST(argMax(l.outside, l.workloads_outside) AS String) as outside_worst_seed,
    toUInt32(countIf(b.seed is not null and l.interruptions_pct_h < b.base_rate)) as seeds_less_interrupted
from longest as l
left join baseline as b on l.seed = b.seed
group by l.strategy
settings join_use_nulls = 1
