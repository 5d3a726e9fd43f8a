# Give me a health score for our gold customers: delivered orders against open tickets.
import asyncio


class CustomerHealth:
    def __init__(self, customer, orders, tickets):
        self.customer = customer
        self.orders = orders
        self.tickets = tickets

    @staticmethod
    def weight(ticket):
        return {"urgent": 3, "high": 2, "normal": 1, "low": 0.5}[ticket["priority"]]

    @property
    def score(self):
        delivered = sum(1 for o in self.orders if o["status"] == "delivered")
        penalty = sum(self.weight(t) for t in self.tickets)
        return round(delivered * 10 - penalty * 5, 1)


async def main():
    hits = (await crm.search_customers(query="bak", tier="gold"))["customers"]
    gold = [c for c in hits if c["tier"] == "gold"]
    all_tickets = (await list_tickets(status="all"))["tickets"]
    scores = {}
    for c in gold:
        orders = (await list_orders(customer_id=c["id"]))["orders"]
        mine = [t for t in all_tickets if t["customer_id"] == c["id"] and t["status"] != "closed"]
        scores[c["name"]] = CustomerHealth(c, orders, mine).score
    return scores


result = asyncio.run(main())
result
