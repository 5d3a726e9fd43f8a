# Which of our gold and silver customers are worth the most? Give me the top 3 with their lifetime value.
result = crm.search_customers(query="bakery", limit=20)
ranked = sorted(
    (c for c in result["customers"] if c["tier"] in ("gold", "silver")),
    key=lambda c: c["lifetime_value"],
    reverse=True,
)
[{"name": c["name"], "company": c["company"], "lifetime_value": c["lifetime_value"]} for c in ranked[:3]]
