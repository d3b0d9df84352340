// An inner join of two generated datasets, both spread over every Thor
// worker: 20000 orders of customers 0..499 against customers 0..399, so
// the orders of customers 400..499 find no match and drop out.

OrderRec := RECORD
    UNSIGNED4 id;
    UNSIGNED4 cust;
    UNSIGNED4 amount;
END;

CustRec := RECORD
    UNSIGNED4 cust;
    STRING cname;
END;

JoinedRec := RECORD
    UNSIGNED4 id;
    UNSIGNED4 cust;
    UNSIGNED4 amount;
    STRING cname;
END;

orders := DATASET(20000,
                  TRANSFORM(OrderRec,
                            SELF.id := COUNTER;
                            SELF.cust := COUNTER % 500;
                            SELF.amount := (COUNTER * 37) % 1000),
                  DISTRIBUTED);

customers := DATASET(400,
                     TRANSFORM(CustRec,
                               SELF.cust := COUNTER - 1;
                               SELF.cname := 'c' + (STRING)(COUNTER - 1)),
                     DISTRIBUTED);

joined := JOIN(orders, customers, LEFT.cust = RIGHT.cust,
               TRANSFORM(JoinedRec, SELF.cname := RIGHT.cname; SELF := LEFT));

perCust := TABLE(joined,
                 {cust; cname; UNSIGNED8 norders := COUNT(GROUP); UNSIGNED8 total := SUM(GROUP, amount)},
                 cust, cname);

OUTPUT(perCust(cust < 4), NAMED('some_customers'));
OUTPUT(CHOOSEN(SORT(joined, id), 3), NAMED('first_orders'));
OUTPUT(TABLE(joined, {UNSIGNED8 n := COUNT(GROUP);
                      UNSIGNED8 amountsum := SUM(GROUP, amount);
                      UNSIGNED8 idsum := SUM(GROUP, id)}),
       NAMED('summary'));
