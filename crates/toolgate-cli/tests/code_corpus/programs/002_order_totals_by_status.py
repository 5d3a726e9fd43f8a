# How much has CUS-1042 ordered, broken down by order status?
orders = list_orders(customer_id="CUS-1042")["orders"]
totals = {}
for order in orders:
    totals[order["status"]] = round(totals.get(order["status"], 0) + order["total"], 2)
totals
