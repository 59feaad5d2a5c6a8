{{ config(order_by='pool') }}
-- The pool catalogue with its correlation-relevant topology and rates.
select
    CAST(pool AS String) as pool,
    CAST(region AS String) as region,
    CAST(hall AS String) as hall,
    CAST(aggregate AS String) as aggregate,
    CAST(sku_family AS String) as sku_family,
    CAST(size AS String) as size,
    vcpu,
    CAST(purchase_model AS String) as purchase_model,
    CAST(business_unit AS String) as business_unit,
    rate_eur_h,
    guaranteed_rate_eur_h,
    toFloat64(if(guaranteed_rate_eur_h > 0, 1 - rate_eur_h / guaranteed_rate_eur_h, 0)) as discount
from {{ ref('stg_pools') }}
