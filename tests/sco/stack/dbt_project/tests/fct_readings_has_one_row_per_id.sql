select id from {{ ref('fct_readings') }} group by id having count() > 1
