# Task: "Where is the parcel for order ORD-20877 right now?"
order = get_order(order_id="ORD-20877")
print("Shipping:", order["shipping"])
try:
    tracking = track_shipment(tracking_number=order["shipping"]["tracking_number"], carrier=order["shipping"]["carrier"])
    print(tracking)
    final_answer(f"The parcel is {tracking['status']}")
except RuntimeError as e:
    print("Tracking failed:", e)
    final_answer(
        f"Live tracking is unavailable; the order is marked '{order['status']}' "
        f"and travels with {order['shipping']['carrier']}."
    )
