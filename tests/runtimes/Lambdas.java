// Lambdas made by two threads, for the names of their hidden classes (issue 13). The JVM numbers
// a lambda's hidden class (Lambdas$$Lambda$14) in the order lambdas are made, JVM-wide: the
// argument ("ab" or "ba") says which thread makes its lambdas first, so two runs number them the
// other way round. Then both threads call theirs at once. Known calls per lambda:
//   thread a: plus (x -> x + 1)            3   its body lambda$a$0
//             times ((x, y) -> x * y)      4   lambda$a$1
//             Lambdas::twice as Function   5   twice(int), its argument unboxed, result boxed
//   thread b: hello (() -> "hi")           6   lambda$b$2
//             trim (s -> s.trim())         7   lambda$b$3
//             String::length, twice over   8 and 9: two references to one method
// Output: one line, each thread's lambdas' class names (numbers and addresses: as the JVM made them).
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.function.Function;
import java.util.function.IntBinaryOperator;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

public class Lambdas {
    static final CountDownLatch firstMade = new CountDownLatch(1);
    static final CyclicBarrier bothMade = new CyclicBarrier(2);

    static int twice(int x) {
        return 2 * x;
    }

    // Waits for the other thread's lambdas unless first, says its own are made, waits for both.
    static void made(boolean first, boolean done) throws Exception {
        if (!first && !done)
            firstMade.await();
        if (first && done)
            firstMade.countDown();
        if (done)
            bothMade.await();
    }

    static String a(boolean first) throws Exception {
        made(first, false);
        IntUnaryOperator plus = x -> x + 1;
        IntBinaryOperator times = (x, y) -> x * y;
        Function<Integer, Integer> twice = Lambdas::twice;
        made(first, true);
        long v = 0;
        for (int i = 0; i < 3; i++)
            v += plus.applyAsInt(i);
        for (int i = 0; i < 4; i++)
            v += times.applyAsInt(i, 2);
        for (int i = 0; i < 5; i++)
            v += twice.apply(i);
        return "a=" + v + " " + plus.getClass().getName() + " " + times.getClass().getName() + " " +
               twice.getClass().getName();
    }

    static String b(boolean first) throws Exception {
        made(first, false);
        Supplier<String> hello = () -> "hi";
        Function<String, String> trim = s -> s.trim();
        ToIntFunction<String> length = String::length;
        ToIntFunction<String> size = String::length;
        made(first, true);
        long v = 0;
        for (int i = 0; i < 6; i++)
            v += hello.get().length();
        for (int i = 0; i < 7; i++)
            v += trim.apply(" x ").length();
        for (int i = 0; i < 8; i++)
            v += length.applyAsInt("abc");
        for (int i = 0; i < 9; i++)
            v += size.applyAsInt("ab");
        return "b=" + v + " " + hello.getClass().getName() + " " + trim.getClass().getName() + " " +
               length.getClass().getName() + " " + size.getClass().getName();
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
            } catch (Exception e) {
                out = e.toString();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        boolean aFirst = args[0].equals("ab");
        Worker a = new Worker(true, aFirst), b = new Worker(false, !aFirst);
        a.start();
        b.start();
        a.join();
        b.join();
        System.out.println(a.out + " " + b.out);
    }
}
