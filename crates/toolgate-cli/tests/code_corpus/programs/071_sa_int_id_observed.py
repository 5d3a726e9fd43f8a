# Task: "How many orders has customer 1103 placed?"
try:
    orders = list_orders(customer_id=1103)
except ValueError as err:
    print("Error:", err)
    orders = list_orders(customer_id="CUS-1103")
print(f"Found {len(orders['orders'])} orders")
final_answer(len(orders["orders"]))
