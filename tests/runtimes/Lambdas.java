// Lambdas made by two threads, for the names of their hidden classes (issue 13). The JVM numbers
// a lambda's hidden class (Lambdas$$Lambda$14) in the order lambdas are made, JVM-wide: the
// first argument ("ab" or "ba") says which thread makes its lambdas first, so two runs number
// them the other way round. Then both threads call theirs at once. Known calls per lambda:
//   thread a: plus (x -> x + 1)            3   its body lambda$a$0
//             times ((x, y) -> x * y)      4   lambda$a$1
//             Lambdas::twice as Function   5   twice(int), its argument unboxed, result boxed
//   thread b: hello (() -> "hi")           6   lambda$b$2
//             trim (s -> s.trim())         7   lambda$b$3
//             String::length, twice over   8 and 9: two references to one method
// With a second argument, a file's path, it says "ready" once the lambdas are made and waits for
// that file before they are called (record -p: making them, ~80,000 call paths of the JDK's class
// spinning, is not recorded). The calls after it use no string concatenation (which would spin
// classes too). Output: one line, each thread's lambdas' class names (numbers and addresses: as
// the JVM made them).
import java.util.concurrent.CountDownLatch;
import java.util.function.Function;
import java.util.function.IntBinaryOperator;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

public class Lambdas {
    static final CountDownLatch firstMade = new CountDownLatch(1);
    static final CountDownLatch bothMade = new CountDownLatch(2);
    static final CountDownLatch go = new CountDownLatch(1);

    static int twice(int x) {
        return 2 * x;
    }

    // Before making its lambdas: waits for the other thread's unless first.
    static void making(boolean first) throws InterruptedException {
        if (!first)
            firstMade.await();
    }

    // Once they are made: says so, waits for the go.
    static void made(boolean first) throws InterruptedException {
        if (first)
            firstMade.countDown();
        bothMade.countDown();
        go.await();
    }

    static String a(boolean first) throws InterruptedException {
        making(first);
        IntUnaryOperator plus = x -> x + 1;
        IntBinaryOperator times = (x, y) -> x * y;
        Function<Integer, Integer> twice = Lambdas::twice;
        String names = plus.getClass().getName() + " " + times.getClass().getName() + " " +
                       twice.getClass().getName();
        made(first);
        long v = 0;
        for (int i = 0; i < 3; i++)
            v += plus.applyAsInt(i);
        for (int i = 0; i < 4; i++)
            v += times.applyAsInt(i, 2);
        for (int i = 0; i < 5; i++)
            v += twice.apply(i);
        return new StringBuilder("a=").append(v).append(' ').append(names).toString();
    }

    static String b(boolean first) throws InterruptedException {
        making(first);
        Supplier<String> hello = () -> "hi";
        Function<String, String> trim = s -> s.trim();
        ToIntFunction<String> length = String::length;
        ToIntFunction<String> size = String::length;
        String names = hello.getClass().getName() + " " + trim.getClass().getName() + " " +
                       length.getClass().getName() + " " + size.getClass().getName();
        made(first);
        long v = 0;
        for (int i = 0; i < 6; i++)
            v += hello.get().length();
        for (int i = 0; i < 7; i++)
            v += trim.apply(" x ").length();
        for (int i = 0; i < 8; i++)
            v += length.applyAsInt("abc");
        for (int i = 0; i < 9; i++)
            v += size.applyAsInt("ab");
        return new StringBuilder("b=").append(v).append(' ').append(names).toString();
    }

    static class Worker extends Thread {
        final boolean isA, first;
        String out;

        Worker(boolean isA, boolean first) {
            this.isA = isA;
            this.first = first;
        }

        public void run() {
            try {
                out = isA ? a(first) : b(first);
            } catch (InterruptedException e) {
                out = e.toString();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        boolean aFirst = args[0].equals("ab");
        Worker a = new Worker(true, aFirst), b = new Worker(false, !aFirst);
        a.start();
        b.start();
        bothMade.await();
        if (args.length > 1) {
            System.out.println("ready");
            System.out.flush();
            java.io.File file = new java.io.File(args[1]);
            while (!file.exists())
                Thread.sleep(10);
        }
        go.countDown();
        a.join();
        b.join();
        System.out.print(a.out);
        System.out.print(' ');
        System.out.println(b.out);
    }
}
