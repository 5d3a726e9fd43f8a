# The flow holds inside a program too: a refund before the order is looked up
# and checked is refused at its call site, and the program can carry on.
#
#   toolgate code run out_of_order.py --as support_bot
verify_customer(email="ada@example.com", last4="4242")
try:
    refund_order(order_id="ORD-10422", amount_cents=2499, reason="damaged")
    outcome = "refunded"
except PermissionError as blocked:
    outcome = str(blocked)
outcome
