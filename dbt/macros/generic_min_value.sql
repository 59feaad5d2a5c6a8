{% test dbt_utils_free_min_value(model, column_name, min_value) %}
-- Rows where the column is below min_value (a negative number of hours is always an input error).
select {{ column_name }} from {{ model }} where {{ column_name }} < {{ min_value }}
{% endtest %}
