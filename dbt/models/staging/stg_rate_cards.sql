select time, region, pool, rate_eur_h, guaranteed_rate_eur_h, utilisation, free_instances, instances, capacity
from {{ source('sco', 'rate_cards') }} final
