# Group CUS-1042's orders by month: number of orders and amount per month.
from itertools import groupby

orders = sorted(list_orders(customer_id="CUS-1042")["orders"], key=lambda o: o["placed_at"])
per_month = {}
for month, group in groupby(orders, key=lambda o: o["placed_at"][:7]):
    group = list(group)
    per_month[month] = {"orders": len(group), "amount": round(sum(o["total"] for o in group), 2)}
per_month
