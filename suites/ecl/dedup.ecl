// DEDUP over generated rows: 50000 rows across every Thor worker holding
// 1000 distinct values v = (id * 13) mod 1000. A global sort + DEDUP keeps
// the lowest id per value; a hash DEDUP (ALL) keeps one row per value.

ValRec := RECORD
    UNSIGNED4 id;
    UNSIGNED4 v;
END;

gen := DATASET(50000,
               TRANSFORM(ValRec, SELF.id := COUNTER; SELF.v := (COUNTER * 13) % 1000),
               DISTRIBUTED);

firstPerV := DEDUP(SORT(gen, v, id), v);
hashed := DEDUP(gen, v, ALL);

OUTPUT(CHOOSEN(firstPerV, 4), NAMED('first4'));
OUTPUT(TABLE(firstPerV, {UNSIGNED8 n := COUNT(GROUP);
                         UNSIGNED8 vsum := SUM(GROUP, v);
                         UNSIGNED8 idsum := SUM(GROUP, id)}),
       NAMED('summary'));
OUTPUT(TABLE(hashed, {UNSIGNED8 n := COUNT(GROUP); UNSIGNED8 vsum := SUM(GROUP, v)}),
       NAMED('hashed'));
