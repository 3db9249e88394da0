// A JVM that is running and idle, for attaching to (e.g. without -XX:+DTraceMethodProbes):
//   javac -d /tmp/sleep Sleep.java && java -cp /tmp/sleep Sleep [SECONDS]
// Prints "ready" once main runs (libjvm.so is mapped by then), then sleeps SECONDS (default 10).
public class Sleep {
    public static void main(String[] args) throws InterruptedException {
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(1000L * (args.length > 0 ? Long.parseLong(args[0]) : 10));
    }
}
