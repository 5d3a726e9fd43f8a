# Recompute ORD-20877's total from its lines, with the discount and shipping.
from dataclasses import dataclass


@dataclass
class Line:
    sku: str
    quantity: int
    unit_price: float

    @property
    def subtotal(self) -> float:
        return self.quantity * self.unit_price


order = get_order(order_id="ORD-20877")
lines = [Line(i["sku"], i["quantity"], i["unit_price"]) for i in order["items"]]
goods = sum(line.subtotal for line in lines)
total = goods - order["discount"] + order["shipping"]["cost"]
{"lines": {l.sku: l.subtotal for l in lines}, "goods": round(goods, 2), "total": round(total, 2)}
