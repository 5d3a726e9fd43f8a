# Task: "Look up customer CUS-1118: their tier and how many delivered orders they have."
customer = crm.get_customer({"id": "CUS-1118"})
print(customer)
orders = list_orders({"customer_id": "CUS-1118", "status": "delivered"})
delivered = [o for o in orders["orders"] if o["status"] == "delivered"]
print(len(delivered), "delivered orders")
final_answer({"id": customer["id"], "tier": customer["tier"], "delivered_orders": len(delivered)})
