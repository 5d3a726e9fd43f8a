# What is CUS-1042's order total in EUR? Some orders were billed in USD; leave out cancelled and refunded ones.
orders = list_orders(customer_id="CUS-1042")["orders"]
rate = get_exchange_rate(base="USD", quote="EUR")["rate"]
total_eur = 0.0
for o in orders:
    if o["status"] in ("cancelled", "refunded"):
        continue
    amount = o["total"] * rate if o["currency"] == "USD" else o["total"]
    total_eur += amount
round(total_eur, 2)
