select region, pool, hall, aggregate, sku_family, size, vcpu, purchase_model, business_unit,
       toDecimal64(rate_eur_h, 6) as rate_eur_h, toDecimal64(guaranteed_rate_eur_h, 6) as guaranteed_rate_eur_h,
       slots, updated_at
from {{ source('sco', 'provider_pools') }} final
