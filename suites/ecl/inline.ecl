// An inline dataset written back as it is, and a summary of it.
// The smallest case: compiles, runs one Thor graph, two results.

PersonRec := RECORD
    UNSIGNED4 id;
    STRING pname;
    UNSIGNED1 age;
END;

people := DATASET([
    {1, 'Ada', 36},
    {2, 'Grace', 45},
    {3, 'Alan', 41},
    {4, 'Edsger', 72}
], PersonRec);

OUTPUT(people, NAMED('people'));
OUTPUT(TABLE(people, {UNSIGNED8 n := COUNT(GROUP); UNSIGNED8 agesum := SUM(GROUP, age)}),
       NAMED('summary'));
