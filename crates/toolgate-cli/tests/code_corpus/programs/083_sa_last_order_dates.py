# Task: "List our customers from the oldest last order to the most recent."
from operator import itemgetter

customers = crm.search_customers(query="", limit=50)["customers"]
for c in sorted(customers, key=itemgetter("last_order_date")):
    print(c["last_order_date"], c["name"], c["country"])
final_answer([c["id"] for c in sorted(customers, key=itemgetter("last_order_date"))])
