# Task: "What are CUS-1042's order totals in GBP?"
orders = list_orders(customer_id="CUS-1042")["orders"]
eur_gbp = get_exchange_rate(base="EUR", quote="GBP")["rate"]
usd_gbp = get_exchange_rate(base="USD", quote="GBP")["rate"]
converted = {}
for o in orders:
    rate = eur_gbp if o["currency"] == "EUR" else usd_gbp
    converted[o["order_id"]] = round(o["total"] * rate, 2)
    print("%s  %9.2f %s -> %9.2f GBP" % (o["order_id"], o["total"], o["currency"], converted[o["order_id"]]))
final_answer(converted)
