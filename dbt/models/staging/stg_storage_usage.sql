select hour, workload, gib_hours, toDecimal64(gib_hours * eur_per_gib_h, 6) as storage_eur
from {{ source('sco', 'storage_usage') }} final
