// Exceptions through JIT-compiled frames (issue 13's "Ex2"): loop calls Integer.parseInt N
// times, half of them on input that throws NumberFormatException, caught in loop; then after
// sleeps 200 ms. HotSpot fires no method__return for some compiled frames an exception unwinds
// (C1's, seen with -XX:TieredStopAtLevel=1 and parseInt and loop compiled: -Xcomp
// -XX:CompileCommand=compileonly,java.lang.Integer::parseInt -XX:CompileCommand=compileonly,Ex2::loop).
// Expected with method probes on: Ex2.main, Ex2.loop, Ex2.after 1 call each; under loop,
// parseInt(String) N calls, each calling parseInt(String,int) once.
// Output: "bad B after_in_ns I after_out_ns O": the exceptions caught, and after's time measured
// inside it (around the sleep) and around its call in main.
public class Ex2 {
    static int bad = 0;
    static long afterInside = 0;

    static void loop(int n) {
        String[] in = {"12", "x1", "7", "zz"};
        for (int i = 0; i < n; i++) {
            try {
                Integer.parseInt(in[i & 3]);
            } catch (NumberFormatException e) {
                bad++;
            }
        }
    }

    static void after() throws InterruptedException {
        long t0 = System.nanoTime();
        Thread.sleep(200);
        afterInside = System.nanoTime() - t0;
    }

    public static void main(String[] args) throws InterruptedException {
        loop(Integer.parseInt(args[0]));
        long t0 = System.nanoTime();
        after();
        long outside = System.nanoTime() - t0;
        System.out.println("bad " + bad + " after_in_ns " + afterInside + " after_out_ns " + outside);
    }
}
