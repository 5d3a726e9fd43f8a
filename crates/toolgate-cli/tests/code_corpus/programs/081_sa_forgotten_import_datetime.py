# Task: "How many days before 2024-06-11 did CUS-1162 last order?"
hits = crm.search_customers(query="Berg")["customers"]
lars = [c for c in hits if c["id"] == "CUS-1162"][0]
print("last order:", lars["last_order_date"])
last = datetime.date.fromisoformat(lars["last_order_date"])
days = (datetime.date(2024, 6, 11) - last).days
final_answer(days)
