# Task: "Split ORD-20712's total evenly across three cost centres, to the cent."
from decimal import Decimal, ROUND_DOWN

orders = list_orders(customer_id="CUS-1042")["orders"]
order = next(o for o in orders if o["order_id"] == "ORD-20712")
total = Decimal(str(order["total"]))
share = (total / 3).quantize(Decimal("0.01"), rounding=ROUND_DOWN)
shares = [share, share, total - 2 * share]
print(total, shares)
final_answer([str(s) for s in shares])
