select event_id, kind, time, region, pool, instance, workload, cause, drill, attributes
from {{ source('sco', 'events') }} final
