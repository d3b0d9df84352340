// A distributed sort: 100000 rows generated across every Thor worker
// (DISTRIBUTED), sorted globally, then checked for order with a global
// ITERATE. Keys are (id * 7919) mod 100003: distinct, scattered.

KeyRec := RECORD
    UNSIGNED4 id;
    UNSIGNED4 k;
END;

gen := DATASET(100000,
               TRANSFORM(KeyRec, SELF.id := COUNTER; SELF.k := (COUNTER * 7919) % 100003),
               DISTRIBUTED);

sorted := SORT(gen, k, id);

CheckRec := RECORD(KeyRec)
    BOOLEAN ok;
END;

checked := ITERATE(PROJECT(sorted, TRANSFORM(CheckRec, SELF.ok := TRUE; SELF := LEFT)),
                   TRANSFORM(CheckRec, SELF.ok := LEFT.k <= RIGHT.k; SELF := RIGHT));

OUTPUT(CHOOSEN(sorted, 5), NAMED('first5'));
OUTPUT(CHOOSEN(SORT(gen, -k, id), 3), NAMED('last3'));
OUTPUT(CHOOSEN(sorted, 2000), NAMED('first2000'));
OUTPUT(TABLE(checked, {UNSIGNED8 n := COUNT(GROUP);
                       UNSIGNED8 ksum := SUM(GROUP, k);
                       UNSIGNED8 out_of_order := SUM(GROUP, IF(ok, 0, 1))}),
       NAMED('summary'));
