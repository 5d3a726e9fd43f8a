# Task: "Explain the state of each of CUS-1042's orders in plain words."
orders = list_orders(customer_id="CUS-1042")["orders"]
explanations = []
for o in orders:
    match o["status"]:
        case "processing":
            text = "is being packed"
        case "shipped":
            text = "is on its way"
        case "delivered":
            text = "has arrived"
        case "cancelled" | "refunded" as s:
            text = f"was {s}"
        case other:
            text = f"is in an unknown state ({other})"
    explanations.append(f"{o['order_id']} {text}")
print("\n".join(explanations))
final_answer(explanations)
