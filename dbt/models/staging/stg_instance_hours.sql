-- One row per hour × workload × pool × purchase model, with the cost lines the attribution split out.
select
    hour,
    region,
    workload,
    pool,
    purchase_model,
    toDecimal64OrZero(JSONExtractString(attributes, 'instance_hours'), 6) as instance_hours,
    cost_eur,
    counterfactual_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'reclaimable_eur'), 6) as reclaimable_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'floor_eur'), 6) as floor_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'fallback_eur'), 6) as fallback_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'headroom_eur'), 6) as headroom_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'gross_saving_eur'), 6) as gross_saving_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'wasted_eur'), 6) as wasted_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'wasted_hours'), 6) as wasted_hours,
    toDecimal64OrZero(JSONExtractString(attributes, 'defect_wasted_eur'), 6) as defect_wasted_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'false_positive_hours'), 6) as false_positive_hours,
    toDecimal64OrZero(JSONExtractString(attributes, 'false_positive_eur'), 6) as false_positive_eur,
    toDecimal64OrZero(JSONExtractString(attributes, 'depth_premium_eur'), 6) as depth_premium_eur
from {{ source('sco', 'cost_attribution') }} final
