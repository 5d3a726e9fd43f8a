# Task: "Which of our gold customers has the most open tickets?"
customers = crm.search_customers("bakery", "gold")["customers"]
tickets = list_tickets("open")["tickets"]
counts = {
    c["name"]: sum(1 for t in tickets if t["customer_id"] == c["id"] and t["status"] == "open")
    for c in customers
    if c["tier"] == "gold"
}
print(counts)
final_answer(max(counts, key=counts.get))
