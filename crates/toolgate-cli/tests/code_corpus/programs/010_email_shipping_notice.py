# Email Maria Keller that her order ORD-20877 has shipped, with the tracking number.
order = get_order(order_id="ORD-20877")
customer = crm.get_customer(id=order["customer_id"])
body = (
    f"Hello {customer['name'].split()[0]},\n\n"
    f"your order {order['order_id']} is on its way with {order['shipping']['carrier']} "
    f"(tracking number {order['shipping']['tracking_number']}).\n\nKeller & Sons Supply"
)
send_email(to=customer["email"], subject=f"Your order {order['order_id']} has shipped", body=body)
