# Give me a one-paragraph summary of customer CUS-1042.
c = crm.get_customer(id="CUS-1042")
orders = list_orders(customer_id=c["id"])["orders"]
delivered = [o for o in orders if o["status"] == "delivered"]
since = c["signup_date"][:4]
summary = (
    f"{c['name']} ({c['company']}, {c['country']}) is a {c['tier']} customer since {since} "
    f"with a lifetime value of {c['lifetime_value']:,.2f} {c['currency']}. "
    f"{len(orders)} recent orders, {len(delivered)} delivered, {c['open_tickets']} open tickets."
)
summary
