// Known call counts for the HotSpot preset. Run with method probes on:
//   javac -d /tmp/calls Calls.java && java -XX:+DTraceMethodProbes -cp /tmp/calls Calls
// (-XX:+ExtendedDTraceProbes also works: it turns on DTraceMethodProbes plus the alloc and
// monitor probes.) Expected hotspot:method__entry counts (= method__return counts) for the
// class "Calls" and its nested classes (arg1 class, arg3 method, arg5 signature):
//   Calls                 main     ([Ljava/lang/String;)V       1
//   Calls                 fib      (I)I                      1973   fib(15): 2*fib(16)-1
//   Calls                 <init>   ()V                          0   (never instantiated)
//   Calls$Counter         <init>   ()V                          1
//   Calls$Counter         inc      ()V                     100000   hot: JIT-compiled midway
//   Calls$Counter         get      ()J                          1
//   Calls$Util            twice    (I)I                         7   static
//   Calls$Base            <init>   ()V                          1   (from Child's constructor)
//   Calls$Child           <init>   ()V                          1
//   Calls$Base            hello    ()I                          3   inherited: declaring class
//   Calls                 thrower  ()V                          2   throws: see below
//   Calls                 over     (I)I                         2   overloads: apart by signature
//   Calls                 over     (J)J                         3
//   Calls                 over     (Ljava/lang/String;)I        4
//   Calls                 lambda$main$0 (I)I                   5   a lambda's body, called by
//   Calls$$Lambda$N+0x... applyAsInt (I)I                       5   its hidden class (N varies)
//   Calls$Name            <init>   ()V                          1
//   Calls$Name            get      ()Ljava/lang/Object;         6   javac's bridge (Supplier), calls
//   Calls$Name            get      ()Ljava/lang/String;         6   the method it stands for
// method__return for thrower: 2 with -Xint; with the JIT usually 0, because main's loop gets
// compiled (OSR) with thrower inlined, and a compiled (or inlined) frame that an exception
// unwinds fires no method__return. Interpreted frames do fire it while unwinding. All other
// entry and return counts above are exact with or without the JIT.
// JDK methods (java/lang/..., the class loader, String concatenation bootstraps) also fire
// many entries: filter on the class name. Output: exactly one line.
public class Calls {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static class Counter {
        private long n;

        void inc() {
            n++;
        }

        long get() {
            return n;
        }
    }

    static class Util {
        static int twice(int x) {
            return 2 * x;
        }
    }

    static class Base {
        int hello() {
            return 1;
        }
    }

    static class Child extends Base {
    }

    static class Name implements java.util.function.Supplier<String> {
        public String get() {
            return "n";
        }
    }

    static int over(int x) {
        return x;
    }

    static long over(long x) {
        return x;
    }

    static int over(String x) {
        return x.length();
    }

    static void thrower() {
        throw new IllegalStateException("x");
    }

    public static void main(String[] args) {
        int f = fib(15);
        Counter c = new Counter();
        for (int i = 0; i < 100000; i++) {
            c.inc();
        }
        int s = 0;
        for (int i = 0; i < 7; i++) {
            s += Util.twice(i);
        }
        Base o = new Child();
        int h = 0;
        for (int i = 0; i < 3; i++) {
            h += o.hello();
        }
        int e = 0;
        for (int i = 0; i < 2; i++) {
            try {
                thrower();
            } catch (IllegalStateException ex) {
                e++;
            }
        }
        long v = 0;
        for (int i = 0; i < 2; i++) {
            v += over(i);
        }
        for (long i = 0; i < 3; i++) {
            v += over(i);
        }
        for (int i = 0; i < 4; i++) {
            v += over("ab");
        }
        java.util.function.IntUnaryOperator plus = x -> x + 1;
        for (int i = 0; i < 5; i++) {
            v += plus.applyAsInt(i);
        }
        java.util.function.Supplier<String> name = new Name();
        for (int i = 0; i < 6; i++) {
            v += name.get().length();
        }
        System.out.println("fib=" + f + " inc=" + c.get() + " twice=" + s + " hello=" + h + " caught=" + e);
    }
}
