# Sourced by the benchmark scripts: the nginx they measure, one shape for
# all (1 worker, keep-alive without limit, a 5 KB file, no access log), so
# their figures compare.
# start_bench_nginx WORK PORT [WORKERS]: writes WORK/www/5k.html and
# WORK/nginx/ (WORKERS worker processes, 1 by default), starts
# nginx in the foreground of a background job, appends its pid to the
# caller's pids array and sets nginx_master and nginx_worker.
start_bench_nginx() {
	local work=$1 port=$2 workers=${3:-1}
	mkdir -p "$work/www" "$work/nginx"
	head -c 5120 /dev/urandom | base64 -w 0 | head -c 5120 > "$work/www/5k.html"
	cat > "$work/nginx/nginx.conf" <<EOC
user root;
worker_processes $workers;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	keepalive_requests 1000000;
	client_body_temp_path $work/nginx;
	proxy_temp_path $work/nginx;
	fastcgi_temp_path $work/nginx;
	uwsgi_temp_path $work/nginx;
	scgi_temp_path $work/nginx;
	server { listen 127.0.0.1:$port; root $work/www; }
}
EOC
	nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
	nginx_master=$!
	pids+=("$nginx_master")
	sleep 1
	nginx_worker=$(pgrep -P "$nginx_master" | head -1)
}
