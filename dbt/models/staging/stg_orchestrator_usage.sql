select hour, region, cost_eur from {{ source('sco', 'orchestrator_usage') }} final
