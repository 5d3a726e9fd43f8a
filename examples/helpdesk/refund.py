# A code-mode conversation with the helpdesk: one program verifies the customer,
# lists their orders, checks each delivered one for a refund, and refunds the
# eligible one. Every call takes the gate: the flow still orders them (a refund
# needs the order looked up and its eligibility checked), and a refund above
# refund_threshold_cents waits for a person, which pauses the program until
# `toolgate approvals approve` (then `toolgate code resume RUN_ID` goes on here).
#
#   toolgate code run refund.py --as support_bot
customer = verify_customer(email="ada@example.com", last4="4242")
orders = list_orders(customer_id=customer["customer_id"])["orders"]

eligible = []
for order in orders:
    if order["status"] != "delivered":
        continue
    check = check_refund_eligibility(order_id=order["order_id"])
    if check["eligible"]:
        eligible.append(order["order_id"])

order = lookup_order(order_id=eligible[0])
keyboard = order["items"][0]
try:
    refund = refund_order(
        order_id=order["order_id"],
        amount_cents=keyboard["unit_price_cents"],
        reason="damaged",
    )
    outcome = "refunded " + refund["refund_id"]
except PermissionError as refused:
    outcome = "not refunded: " + str(refused)
print(customer["name"], "-", outcome)
{"checked": len(eligible), "order": order["order_id"], "outcome": outcome}
