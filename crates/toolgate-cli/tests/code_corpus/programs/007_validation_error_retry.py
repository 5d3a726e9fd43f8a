# Look up the orders of customer 1042 (the user only gave the number).
try:
    orders = list_orders(customer_id="1042")["orders"]
except ValueError as e:
    print("lookup failed, retrying with the CRM id format:", str(e).splitlines()[0])
    orders = list_orders(customer_id="CUS-1042")["orders"]
len(orders)
