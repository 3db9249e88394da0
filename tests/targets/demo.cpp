// The bundled demo for `make demo`: a toy request server. Each request is
// parsed, routed to a handler that renders a template and computes a
// (recursive) checksum, and logged; one in four requests waits on a "disk".
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <usdtprof/usdtprof.h>

namespace {

void burn(std::chrono::microseconds us)
{
	auto end = std::chrono::steady_clock::now() + us;
	while (std::chrono::steady_clock::now() < end)
		;
}

unsigned checksum(const std::string &s, size_t depth)
{
	USDTPROF_FUNC();
	burn(std::chrono::microseconds(20));
	return depth == 0 ? unsigned(s.size()) : checksum(s, depth - 1) * 31 + unsigned(depth);
}

struct Request {
	std::string path;
	int id;
};

class Server {
public:
	std::string handle(int id)
	{
		USDTPROF_FUNC();
		Request r = parse(id);
		std::string body = route(r);
		log(r);
		return body;
	}

private:
	Request parse(int id)
	{
		USDTPROF_FUNC();
		burn(std::chrono::microseconds(150));
		return {id % 3 ? "/items" : "/users", id};
	}

	std::string route(const Request &r)
	{
		USDTPROF_FUNC();
		std::string page = render(r);
		if (r.id % 4 == 0)
			read_disk();
		checksum(page, 8);
		return page;
	}

	std::string render(const Request &r)
	{
		USDTPROF_SCOPE("template::render");
		burn(std::chrono::microseconds(r.path == "/users" ? 600 : 300));
		return "<html>" + r.path + "</html>";
	}

	void read_disk()
	{
		USDTPROF_FUNC();
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}

	void log(const Request &)
	{
		USDTPROF_FUNC();
		burn(std::chrono::microseconds(50));
	}
};

} // namespace

int main(int argc, char **argv)
{
	int requests = argc > 1 ? std::stoi(argv[1]) : 400;
	Server server;
	size_t bytes = 0;
	for (int i = 0; i < requests; i++)
		bytes += server.handle(i).size();
	printf("demo: served %d requests (%zu bytes)\n", requests, bytes);
	return 0;
}
