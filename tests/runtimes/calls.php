<?php
// Known call counts for the PHP preset (run with USE_ZEND_DTRACE=1).
// Expected php:function__entry counts (= function__return counts):
//   main                 1   (the script's top-level code; class "" scope "")
//   fib               1973   (fib(15) recursive: 2*fib(16)-1 calls)
//   Counter::inc      1000   (instance method; class "Counter", scope "::")
//   Counter::get         1   (called once for the output line)
//   Util::twice          7   (static method; class "Util", scope "::")
//   Base::hello          3   (inherited, called on Child: reported with the declaring class "Base")
//   {closure}            5   (closure; class "" scope "")
//   thrower              2   (throws; return still fires as the exception unwinds)
// Internal functions (count(), intdiv(), printf ...) never fire function__entry.
// Output: exactly one line.

function fib($n)
{
    if ($n < 2) {
        return $n;
    }
    return fib($n - 1) + fib($n - 2);
}

class Counter
{
    private $n = 0;
    public function inc()
    {
        $this->n++;
    }
    public function get()
    {
        return $this->n;
    }
}

class Util
{
    public static function twice($x)
    {
        return 2 * $x;
    }
}

class Base
{
    public function hello()
    {
        return 1;
    }
}

class Child extends Base
{
}

function thrower()
{
    throw new RuntimeException("x");
}

$f = fib(15);
$c = new Counter();
for ($i = 0; $i < 1000; $i++) {
    $c->inc();
}
$s = 0;
for ($i = 0; $i < 7; $i++) {
    $s += Util::twice($i);
}
$o = new Child();
$h = 0;
for ($i = 0; $i < 3; $i++) {
    $h += $o->hello();
}
$cl = function ($x) {
    return $x + 1;
};
$k = 0;
for ($i = 0; $i < 5; $i++) {
    $k = $cl($k);
}
$e = 0;
for ($i = 0; $i < 2; $i++) {
    try {
        thrower();
    } catch (RuntimeException $ex) {
        $e++;
    }
}
echo "fib=$f inc={$c->get()} twice=$s hello=$h closure=$k caught=$e\n";
