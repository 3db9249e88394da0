#include "target/naming.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>


#include "target/probe_roles.h"
#include "target/sql.h"

namespace usdtprof {

namespace {

std::string text(const usdtprof_name &n, int part)
{
	return std::string(n.text[part], strnlen(n.text[part], USDTPROF_NAME_LEN));
}

std::string base_name(const std::string &path)
{
	size_t slash = path.rfind('/');
	return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string location(const std::string &file, int64_t line)
{
	return file.empty() ? "" : line > 0 ? file + ":" + std::to_string(line) : file;
}

// The name Xdebug gives PHP's top-level code (of the script, of an included
// file, of eval'd code).
constexpr const char *kPhpTopLevel = "{main}";
constexpr const char *kPhpClosure = "{closure}";
// PHP names an anonymous class "class@anonymous" (or "Parent@anonymous"), a
// NUL, then where it is declared and a counter: its probes' text ends at the
// NUL, alike for every anonymous class of that parent.
constexpr const char *kPhpAnonymousClass = "@anonymous";

bool ends_with(const std::string &s, const std::string &suffix)
{
	return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_ident(char c) { return isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Removes a trailing GCC "[with T = int]" or clang "[T = int]" suffix.
void strip_template_bindings(std::string &s)
{
	if (!ends_with(s, "]"))
		return;
	int depth = 0;
	for (size_t i = s.size(); i-- > 0;) {
		if (s[i] == ']')
			depth++;
		else if (s[i] == '[' && --depth == 0) {
			std::string inner = s.substr(i);
			if (i > 0 && s[i - 1] == ' ' && (inner.rfind("[with ", 0) == 0 || inner.find(" = ") != std::string::npos))
				s.erase(i - 1);
			return;
		}
	}
}

// Removes trailing cv/ref/noexcept qualifiers of a member function.
void strip_qualifiers(std::string &s)
{
	static const char *const quals[] = {"const", "volatile", "noexcept", "&&", "&"};
	for (bool again = true; again;) {
		again = false;
		while (!s.empty() && s.back() == ' ')
			s.pop_back();
		for (const char *q : quals) {
			std::string qual = q;
			if (ends_with(s, qual) && s.size() > qual.size()) {
				char before = s[s.size() - qual.size() - 1];
				if (before == ' ' || before == ')') {
					s.erase(s.size() - qual.size());
					again = true;
					break;
				}
			}
		}
	}
}

// Start of the "operator" keyword naming an operator function, or npos.
size_t find_operator(const std::string &s)
{
	for (size_t pos = s.find("operator"); pos != std::string::npos; pos = s.find("operator", pos + 1)) {
		size_t end = pos + 8;
		if ((pos == 0 || !is_ident(s[pos - 1])) && (end == s.size() || !is_ident(s[end])))
			return pos;
	}
	return std::string::npos;
}

} // namespace

bool cap_name(std::string &s, size_t max_bytes)
{
	if (s.size() <= max_bytes)
		return false;
	static const std::string mark = "...";
	size_t cut = max_bytes > mark.size() ? max_bytes - mark.size() : 0;
	// Not inside a UTF-8 sequence: back to a byte that starts one.
	while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80)
		cut--;
	s.resize(cut);
	s += mark;
	return true;
}

FunctionName function_name(const NameLookup &lookup, uint32_t tgid, uint64_t func, bool *cut)
{
	switch (func) {
	case USDTPROF_FUNC_RUNNING_AT_ATTACH: return {"[running at attach]", ""};
	case USDTPROF_FUNC_TRUNCATED: return {"[truncated]", ""};
	case USDTPROF_FUNC_TASK: return {"[task]", ""};
	case USDTPROF_FUNC_OTHER: return {"[other]", ""};
	}
	if (auto name = lookup(tgid, func)) {
		bool name_cut = cap_name(name->name, kMaxNameBytes);
		bool location_cut = cap_name(name->location, kMaxNameBytes);
		if (cut)
			*cut = name_cut || location_cut;
		return *name;
	}
	char unknown[40];
	snprintf(unknown, sizeof(unknown), "[unknown 0x%llx]", (unsigned long long)func);
	return {unknown, ""};
}

std::string simplify_function_name(const std::string &name)
{
	std::string s = name;
	strip_template_bindings(s);
	strip_qualifiers(s);
	if (!ends_with(s, ")"))
		return name;

	// The '(' opening the parameter list: match the final ')' over balanced brackets.
	size_t open = std::string::npos;
	int depth = 0;
	for (size_t i = s.size(); i-- > 0;) {
		char c = s[i];
		if (c == ')' || c == '>' || c == ']')
			depth++;
		else if ((c == '(' || c == '<' || c == '[') && --depth == 0) {
			open = i;
			break;
		}
	}
	if (open == std::string::npos || s[open] != '(')
		return name;
	std::string prefix = s.substr(0, open);
	while (!prefix.empty() && prefix.back() == ' ')
		prefix.pop_back();
	// A prefix ending in ')' means a function-pointer return type or similar: give up.
	if (prefix.empty() || (ends_with(prefix, ")") && !ends_with(prefix, "operator()")))
		return name;

	// The return type ends at the last space outside brackets, before any
	// "operator" keyword (operator names contain '<', '>' and spaces).
	size_t limit = std::min(find_operator(prefix), prefix.size());
	size_t start = 0;
	depth = 0;
	for (size_t i = 0; i < limit; i++) {
		char c = prefix[i];
		if (c == '<' || c == '(' || c == '[')
			depth++;
		else if (c == '>' || c == ')' || c == ']')
			depth--;
		else if (c == ' ' && depth == 0)
			start = i + 1;
		if (depth < 0)
			return name;
	}
	if (depth != 0)
		return name;
	return prefix.substr(start);
}

namespace {

// A JVM type descriptor's type at *at ("I", "[J", "Ljava/lang/String;") as
// Java source writes it, classes by their simple name; at moves past it.
// "" at the end or at a descriptor cut short.
std::string java_type(std::string_view d, size_t *at)
{
	int dims = 0;
	while (*at < d.size() && d[*at] == '[')
		++dims, ++*at;
	if (*at >= d.size())
		return "";
	std::string type;
	static const std::string_view codes = "BCDFIJSZV";
	static const char *const names[] = {"byte", "char", "double", "float", "int", "long", "short", "boolean", "void"};
	char c = d[(*at)++];
	if (size_t i = codes.find(c); i != std::string_view::npos) {
		type = names[i];
	} else if (c == 'L') {
		size_t end = d.find(';', *at);
		if (end == std::string_view::npos)
			return "";
		std::string_view cls = d.substr(*at, end - *at);
		size_t slash = cls.rfind('/');
		type = std::string(slash == std::string_view::npos ? cls : cls.substr(slash + 1));
		*at = end + 1;
	} else {
		return "";
	}
	for (; dims > 0; --dims)
		type += "[]";
	return type;
}

} // namespace

std::string java_parameters(std::string_view descriptor)
{
	if (descriptor.empty() || descriptor[0] != '(')
		return "";
	std::string out = "(";
	size_t at = 1;
	while (at < descriptor.size() && descriptor[at] != ')') {
		std::string type = java_type(descriptor, &at);
		if (type.empty())
			return out + (out.size() > 1 ? ",...)" : "...)"); // cut short (USDTPROF_NAME_LEN)
		out += (out.size() > 1 ? "," : "") + type;
	}
	return at < descriptor.size() ? out + ")" : out + (out.size() > 1 ? ",...)" : "...)");
}

std::string java_class_name(std::string_view internal)
{
	std::string cls(internal);
	// A hidden class (a lambda's, a LambdaForm's) is named with its address
	// after a '+' (Class.getName() shows '/'): different in every run.
	for (char sep : {'+', '/'})
		if (size_t at = cls.rfind(std::string(1, sep) + "0x"); at != std::string::npos && at + 3 < cls.size() &&
		    cls.find_first_not_of("0123456789abcdefABCDEF", at + 3) == std::string::npos) {
			cls.resize(at);
			break;
		}
	std::replace(cls.begin(), cls.end(), '/', '.');
	return cls;
}

namespace {

// The length of the hidden class of a lambda's method, "pkg.Srv$$Lambda$11"
// of "pkg.Srv$$Lambda$11.apply(Object):Object" (its host class "pkg.Srv"
// before the "$$Lambda"), 0 for any other name: a class named "$$Lambda$"
// and digits, or "$$Lambda" (JDK 21's, its number gone with its address).
// A method's name holds no '.', its parameters' simple names none before '('.
size_t lambda_class(std::string_view name)
{
	std::string_view head = name.substr(0, name.find('('));
	size_t dot = head.rfind('.');
	if (dot == std::string_view::npos)
		return 0;
	std::string_view cls = head.substr(0, dot);
	size_t at = cls.rfind("$$Lambda");
	if (at == std::string_view::npos || at == 0)
		return 0;
	std::string_view number = cls.substr(at + strlen("$$Lambda"));
	if (!number.empty() && (number.size() < 2 || number[0] != '$' ||
				number.find_first_not_of("0123456789", 1) != std::string_view::npos))
		return 0;
	return dot;
}

// A conversion the JVM's lambda factory adds around the method a reference
// names (boxing an int result, unboxing an Integer argument):
// java.lang.Integer.valueOf(int):Integer, java.lang.Integer.intValue().
bool boxing_conversion(std::string_view callee)
{
	static const std::string_view primitives[] = {"boolean", "byte", "char", "short", "int", "long", "float", "double"};
	static const std::string_view wrappers[] = {"Boolean", "Byte", "Character", "Short", "Integer",
						    "Long", "Float", "Double", "Number"};
	if (!callee.starts_with("java.lang."))
		return false;
	callee.remove_prefix(strlen("java.lang."));
	size_t dot = callee.find('.');
	std::string_view cls = callee.substr(0, dot == std::string_view::npos ? 0 : dot);
	if (std::find(std::begin(wrappers), std::end(wrappers), cls) == std::end(wrappers))
		return false;
	std::string_view method = callee.substr(dot + 1);
	for (std::string_view p : primitives)
		if (method == std::string(p) + "Value()" || method == "valueOf(" + std::string(p) + "):" + std::string(cls))
			return true;
	return false;
}

// The methods a hidden class's methods call that name it: what ran inside it
// but is not its code left out (a class's initialisation, synthetic frames
// such as "[other]"), then boxing conversions when another method is left
// (when none is, the conversions are what it stands for: all of them).
std::vector<std::string> lambda_targets(const std::set<std::string> &callees)
{
	std::vector<std::string> kept;
	for (const std::string &c : callees)
		if (!c.starts_with("[") && !c.ends_with(".<clinit>()"))
			kept.push_back(c);
	if (std::any_of(kept.begin(), kept.end(), [](const std::string &c) { return !boxing_conversion(c); }))
		std::erase_if(kept, [](const std::string &c) { return boxing_conversion(c); });
	return kept;
}

// The callee as a lambda's class shows it: without its class when it is the
// host's, a javac lambda body (lambda$main$3, unique in its class) without
// its parameters too.
std::string lambda_tag(std::string_view host, const std::string &callee)
{
	if (callee.size() <= host.size() || !callee.starts_with(host) || callee[host.size()] != '.')
		return callee;
	std::string own = callee.substr(host.size() + 1);
	return own.starts_with("lambda$") ? own.substr(0, own.find('(')) : own;
}

// The JVM's number of a hidden class ("Srv$$Lambda$11" -> 11; 0: none):
// the order in which the JVM made its lambdas.
uint64_t lambda_number(std::string_view cls)
{
	size_t at = cls.rfind("$$Lambda$");
	if (at == std::string_view::npos)
		return 0;
	uint64_t n = 0;
	for (char c : cls.substr(at + strlen("$$Lambda$")))
		n = n * 10 + uint64_t(c - '0'); // lambda_class checked the digits
	return n;
}

} // namespace

bool JavaLambdaNames::is_lambda(std::string_view name)
{
	return lambda_class(name) != 0;
}

void JavaLambdaNames::add_call(uint32_t tgid, const std::string &lambda, const std::string &callee)
{
	// Its constructor calls Object.<init>() (a serializable one's
	// writeReplace, SerializedLambda's): not what it stands for.
	size_t end = lambda_class(lambda);
	std::string_view method = std::string_view(lambda).substr(end);
	if (end == 0 || method.starts_with(".<init>(") || method.starts_with(".writeReplace("))
		return;
	std::string cls = lambda.substr(0, end);
	if (!callee.starts_with(cls + ".")) // its own methods: none stands for it
		callees_[{tgid, cls}].insert(callee);
}

void JavaLambdaNames::resolve()
{
	resolved_ = true;
	// (tgid, new class) -> the hidden classes given it, by their numbers.
	std::map<std::pair<uint32_t, std::string>, std::map<uint64_t, std::string>> named;
	for (const auto &[key, callees] : callees_) {
		std::vector<std::string> targets = lambda_targets(callees);
		// JDK 21's classes have no number: "Srv$$Lambda" may be several
		// lambdas, and several methods theirs, not one's.
		if (targets.empty() || (targets.size() > 1 && lambda_number(key.second) == 0))
			continue;
		std::string host = key.second.substr(0, key.second.rfind("$$Lambda"));
		// Several methods (Integer::valueOf as a Function<Integer,Integer>:
		// both conversions): all of them, in order.
		std::string tag;
		for (const std::string &t : targets)
			tag += (tag.empty() ? "" : "+") + lambda_tag(host, t);
		std::string renamed = host + "$$Lambda[" + tag;
		renamed_[key] = renamed;
		named[{key.first, renamed}][lambda_number(key.second)] = key.second;
	}
	// Two hidden classes of one process given one name (two references to
	// one method in one class) are numbered in the order the JVM made them
	// ("[java.lang.String.length()#2]"): never one row, and the same names
	// in another run that makes them in the same order.
	for (const auto &[name, classes] : named) {
		int n = 0;
		for (const auto &[number, cls] : classes) {
			std::string &r = renamed_[{name.first, cls}];
			if (classes.size() > 1)
				r += "#" + std::to_string(++n);
			r += "]";
		}
	}
}

std::string JavaLambdaNames::name(uint32_t tgid, const std::string &name)
{
	if (!resolved_)
		resolve();
	size_t end = lambda_class(name);
	if (end == 0)
		return name;
	auto it = renamed_.find({tgid, name.substr(0, end)});
	if (it == renamed_.end())
		return name;
	// Names are at most kMaxNameBytes (cap_name): one whose callee would
	// take it over keeps its number, as its own name was, never cut into
	// another's.
	std::string renamed = it->second + name.substr(end);
	return renamed.size() <= kMaxNameBytes ? renamed : name;
}

// An object (or array) return type, ":String", "" for a primitive or void
// one. javac's bridge methods (a generic interface's `Object get()` beside
// `String get()`, a covariant override's `Buffer limit(int)`) differ from the
// method they call only by it: without it, one row with both calls, marked
// [recursive]. A primitive return type never tells two methods apart.
std::string java_object_return(std::string_view descriptor)
{
	size_t at = descriptor.find(')');
	if (at == std::string_view::npos || ++at >= descriptor.size() ||
	    (descriptor[at] != 'L' && descriptor[at] != '['))
		return "";
	std::string type = java_type(descriptor, &at);
	return type.empty() ? "" : ":" + type; // "" if cut short
}

std::string java_method_name(std::string_view cls, std::string_view method, std::string_view descriptor)
{
	return java_class_name(cls) + "." + std::string(method) + java_parameters(descriptor) +
	       java_object_return(descriptor);
}

// PHP names top-level code "main" too, a literal in its binary, where a
// user function's name is a zend_string whose length was captured (num[0]).
// Closures, all "{closure}" to PHP, by where they run, as Xdebug names them:
// {closure:/srv/app/f.php:12}; a method of an anonymous class by where it
// runs too: class@anonymous::handle:/srv/app/f.php:4.
FunctionName php_function_name(const usdtprof_name &n, const ProbeRole &)
{
	std::string cls = text(n, 3), fn = text(n, 0);
	bool zend_string = static_cast<uint64_t>(n.num[0]) == fn.size();
	if (cls.empty() && fn == "main" && !zend_string)
		fn = kPhpTopLevel;
	if (fn == kPhpClosure)
		fn = "{closure:" + location(text(n, 1), n.num[2]) + "}";
	else if (ends_with(cls, kPhpAnonymousClass) && n.num[2] > 0)
		fn += ":" + location(text(n, 1), n.num[2]);
	return {cls.empty() ? fn : cls + "::" + fn, location(text(n, 1), n.num[2])};
}

std::string ruby_class_name(const std::string &name)
{
	if (!name.starts_with("#"))
		return name;
	// What the kernel leaves out of the identity (content_step_anon): the
	// hex digits after each ":0x".
	std::string out;
	int seen = 0; // of ":0x"
	for (char ch : name) {
		if (seen == 3 && ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			continue;
		seen = ch == ':' ? 1 : seen == 1 && ch == '0' ? 2 : seen == 2 && ch == 'x' ? 3 : 0;
		out += ch;
	}
	for (auto [ruby, ours] : {std::pair<const char *, const char *>{"#<Class:0x>", "(anonymous class)"},
				  {"#<Module:0x>", "(anonymous module)"}})
		for (size_t at; (at = out.find(ruby)) != std::string::npos;)
			out.replace(at, strlen(ruby), ours);
	return out;
}

// Ruby's notation: Foo#m an instance method (or a module's), Foo.m a
// singleton method of Foo (a class method), when the probe proved it; a
// class without a name as ruby_class_name has it.
FunctionName ruby_method_name(const usdtprof_name &n, const ProbeRole &)
{
	const char *separator = n.num[0] == USDTPROF_OWNER_SINGLETON ? "." : "#";
	return {ruby_class_name(text(n, 0)) + separator + text(n, 1), location(text(n, 2), n.num[3])};
}

FunctionName java_captured_name(const usdtprof_name &n, const ProbeRole &)
{
	return {java_method_name(text(n, 0), text(n, 1), text(n, 2)), ""};
}

// A directory Python imports modules from: pythonX.Y (the standard library),
// site-packages, dist-packages.
static bool python_import_root(std::string_view dir)
{
	if (dir == "site-packages" || dir == "dist-packages")
		return true;
	if (dir.substr(0, 6) != "python" || dir.size() == 6)
		return false;
	return dir.substr(6).find_first_not_of("0123456789.") == std::string_view::npos;
}

// Python's module path, from the path's text alone: usdtprof runs as root and
// never looks a profiled process's path up (its text is the process's to
// choose; docs/security.md). A file below the last directory Python imports
// from keeps the directories between (http/client.py beside
// xmlrpc/client.py, json/tool.py, yaml/reader.py), as its module name does;
// any other file its base name (app.py), and a package's __init__.py or
// __main__.py its directory.
std::string python_file_name(const std::string &path)
{
	std::string name = base_name(path);
	if (name.size() == path.size())
		return name;
	size_t end = path.size() - name.size() - 1; // the '/' before the base name
	for (size_t slash = end; slash != 0 && slash != std::string::npos;) {
		size_t start = path.rfind('/', slash - 1);
		size_t from = start == std::string::npos ? 0 : start + 1;
		if (python_import_root(std::string_view(path).substr(from, slash - from)))
			return path.substr(slash + 1);
		slash = start;
	}
	if (name == "__init__.py" || name == "__main__.py") {
		std::string dir = base_name(path.substr(0, end));
		return dir.empty() ? name : dir + "/" + name;
	}
	return name;
}

bool python_exec_file(const std::string &file)
{
	return file.starts_with("<") && file.ends_with(">") && !file.starts_with("<frozen ");
}

bool python_anonymous(const std::string &qualified)
{
	size_t dot = qualified.rfind('.');
	std::string_view last = std::string_view(qualified).substr(dot == std::string::npos ? 0 : dot + 1);
	return last == "<lambda>" || last == "<listcomp>" || last == "<dictcomp>" || last == "<setcomp>" ||
	       last == "<genexpr>";
}

// The qualified name (co_qualname: K.Inner.meth, f.<locals>.g) when it was
// read (see kPython311Qualname), the bare one otherwise; a file by its
// packages' directories too; a lambda or comprehension by its first line
// too, which its id holds (co_firstlineno, num[3]); where that was not read,
// one inside a function or class by the line of its first hit (its own code
// object and qualname string: its own id), one at a module's top level by
// none (CPython's one "<lambda>" string for all of them: one id). Code
// exec()'d or eval()'d under a made-up file name ("<string>:<module>") is
// keyed by its caller (num[1], the caller's function id): nested exec()'d
// code objects pass one file, name and line, and are named from their
// caller ("<string>:<module> from collections/__init__.py:namedtuple").
FunctionName python_function_name(const usdtprof_name &n, const ProbeRole &)
{
	std::string qualified = text(n, 3), file = text(n, 0), bare = qualified.empty() ? text(n, 1) : qualified;
	std::string name = python_file_name(file) + ":" + bare;
	int64_t line = n.num[3] > 0 ? n.num[3] : qualified.find('.') != std::string::npos ? n.num[2] : 0;
	if (python_anonymous(qualified) && line > 0)
		name += ":" + std::to_string(line);
	FunctionName f{name, location(file, n.num[2])};
	if (bare == "<module>" && python_exec_file(file))
		f.caller = uint64_t(n.num[1]);
	return f;
}

FunctionName sql_statement_name(const usdtprof_name &n, const ProbeRole &)
{
	return {normalize_sql(text(n, 0)), ""};
}

FunctionName native_captured_name(const usdtprof_name &n, const ProbeRole &)
{
	return {simplify_function_name(n.text[0]), ""};
}

FunctionName string_name(const usdtprof_name &captured, const ProbeRole &)
{
	return {captured.text[0], ""};
}

FunctionName integer_name(const usdtprof_name &captured, const ProbeRole &probe)
{
	return {probe.name + "(" + std::to_string(captured.num[0]) + ")", ""};
}

} // namespace usdtprof
